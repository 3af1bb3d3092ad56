"""Makes data: the latent world, structured synthesis per object, text writers and task instances."""

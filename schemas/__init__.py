"""The org model: sObject schemas, profiles and the dependency graph. The bottom floor of orgseed."""

from schemas.errors import OrgseedError, Terminal, Transient
from schemas.model import FieldSpec, ObjectSpec, OrgModel, load_model

__all__ = ["FieldSpec", "ObjectSpec", "OrgModel", "OrgseedError", "Terminal", "Transient", "load_model"]

"""Text writers behind one interface: the offline writer (default) and the LLM writer."""

from generator.text.base import TextKind, TextRequest, TextWriter

__all__ = ["TextKind", "TextRequest", "TextWriter"]

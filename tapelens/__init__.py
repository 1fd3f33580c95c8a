"""tapelens: tape placement analytics for mass-storage sites."""

__version__ = "0.1.0"

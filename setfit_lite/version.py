"""The version of setfit_lite (a leaf module: the modules that record it in saved models import it from here)."""

__version__ = "0.1.0"

"""``python -m setfit_lite.cli`` (and ``torchrun -m setfit_lite.cli``): the ``setfit-lite`` command."""

from . import main

raise SystemExit(main())

"""What the pool's tools print, pure: ads in condor_status's and condor_q's layouts.

:mod:`epcore.views.ad_formats` prints ads long, as JSON or autoformatted and selects them by a
constraint; :mod:`epcore.views.tables` renders the plain-text tables (queue, holds, user
priorities, slots). The commands in :mod:`epcore.cli` gather the ads and print the views.
"""

from __future__ import annotations

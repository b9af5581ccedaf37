"""Links to peers in other processes: CEDAR clients implementing the Protocols of
:mod:`epcore.interfaces`, one module per Protocol, made by the :class:`Locator`'s
``connect`` that the pool's assembly gives."""

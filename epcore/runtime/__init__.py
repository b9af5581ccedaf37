"""The runtime layer: the event loop, framing, request helpers, bounded servers and ad files
that every role shares; it knows no role."""

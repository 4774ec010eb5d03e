"""Request and response models, one module per front door, and what they share (``common``)."""

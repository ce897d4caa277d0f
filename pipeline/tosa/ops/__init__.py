"""One module per operator (``op_<name>.py``); the registry imports every one of them."""

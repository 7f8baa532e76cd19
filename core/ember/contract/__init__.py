"""The Backend contract: the op registry, the Backend base class and its caps (work in progress)."""

"""Demo recipes behind ``ember demo ...`` (the runnable entry points live in the repo's demos/)."""

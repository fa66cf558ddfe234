"""Pure scheduler logic: no I/O, no AWS, no clocks read implicitly."""

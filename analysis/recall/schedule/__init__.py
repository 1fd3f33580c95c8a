"""The schedule: sharing policies, drives, the read order on a tape, tapes onto drives."""

"""The schedule: drive-sharing policies, the drives that read each media type, the order of the
reads on a tape, and the tapes dispatched onto drives."""

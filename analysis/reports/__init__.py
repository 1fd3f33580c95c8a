"""Gap, duplicate, tape, occupancy and rate reports over the marts, and their charts."""

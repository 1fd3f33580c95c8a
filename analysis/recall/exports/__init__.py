"""A recall plan written out for staging systems: plan files and scripts, dCache tape info and
ENDIT hints, stage requests sent to a WLCG Tape REST API."""

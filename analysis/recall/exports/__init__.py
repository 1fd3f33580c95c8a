"""Exports of a recall plan to staging systems.

Plan files and scripts, dCache tape info and ENDIT hints, stage requests sent to a WLCG Tape
REST API.
"""

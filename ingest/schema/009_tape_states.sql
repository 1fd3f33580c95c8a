-- Tape states in one vocabulary (ingest/formats/tape_states.py), the system's own words kept.
alter table tapelens.tapes add column if not exists state_raw text;
alter table tapelens.tapes drop constraint if exists tapes_state_check;
alter table tapelens.tapes add constraint tapes_state_check check (
    state in ('empty', 'filling', 'full', 'readonly', 'disabled', 'repacking', 'repacked',
              'broken', 'exported', 'unavailable', 'destroyed', 'unknown')
);

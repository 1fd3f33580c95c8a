-- A copy that needs more than one cartridge: an HPSS `ls -P` line with one position and several
-- volumes (a copy striped across cartridges, or continuing on the next when it did not fit).
-- The row stands on the first cartridge, where its read starts; the other cartridges, in list
-- order and comma-separated, are kept here, since a recall of the copy must mount them too.
-- Null for a copy on one cartridge.
alter table tapelens.tape_files add column if not exists other_volumes text;

-- A Spectrum Protect aggregate is named after its place ("volume:position"), and a copy keeps
-- its place against later listings' ranks (docs/formats/tsm.md). Before the name was kept with
-- the place, a newer dump could give a kept aggregate member the name of its new rank. Such
-- names are set back to the place the copy holds.
update tapelens.tape_files t
   set aggregate_id = t.volume || ':' || t.position
 where t.aggregate_id is not null
   and t.aggregate_id <> t.volume || ':' || t.position
   and exists (select 1 from tapelens.ingest_runs r
                where r.run_id = t.ingest_run_id
                  and r.format in ('tsm-contents', 'tsm-qcontent'));

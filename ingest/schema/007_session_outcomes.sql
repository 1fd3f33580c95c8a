-- A tape session can end in failure or be aborted: it is a mount that happened, with its real
-- times, not a complete one.
alter table tapelens.mounts drop constraint if exists mounts_status_check;
alter table tapelens.mounts add constraint mounts_status_check check (
    status in ('complete', 'no_dismount', 'no_mount', 'no_request', 'failed', 'aborted')
);

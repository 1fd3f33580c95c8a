-- Sizes some dumps print rounded (CTA's text table: 5.2G): the rounding bound, so that a size is
-- never taken for exact; null when size_bytes is exact.
alter table tapelens.tape_files add column if not exists size_bound_bytes bigint
    check (size_bound_bytes is null or size_bound_bytes >= 0);

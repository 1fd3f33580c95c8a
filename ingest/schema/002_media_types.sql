-- Generated from tapelens/media.py (python -m tapelens.media); a test keeps them equal.
insert into tapelens.media_types (media_type, family, generation, barcode_suffix, native_rate_mb_s, capacity_bytes, robot_s, load_s, locate_avg_s, rewind_avg_s, unload_s, readable_by, writable_by, source) values
    ('LTO-5', 'LTO', 5, 'L5', 140, 1500000000000, 11, 12, 50, 55, 17, array['LTO-5', 'LTO-6']::text[], array['LTO-5', 'LTO-6']::text[], 'vendor datasheet (rounded)'),
    ('LTO-6', 'LTO', 6, 'L6', 160, 2500000000000, 11, 12, 50, 60, 17, array['LTO-6', 'LTO-7']::text[], array['LTO-6', 'LTO-7']::text[], 'vendor datasheet (rounded)'),
    ('LTO-7', 'LTO', 7, 'L7', 300, 6000000000000, 11, 13, 59, 62, 22, array['LTO-7', 'LTO-8']::text[], array['LTO-7', 'LTO-8']::text[], 'BNL LTO-7 measurements (docs/domain.md)'),
    ('LTO-7M', 'LTO', 7, 'M8', 300, 9000000000000, 11, 13, 62, 66, 22, array['LTO-8']::text[], array['LTO-8']::text[], 'vendor datasheet (rounded)'),
    ('LTO-8', 'LTO', 8, 'L8', 360, 12000000000000, 11, 15, 62, 72, 22, array['LTO-8', 'LTO-9']::text[], array['LTO-8', 'LTO-9']::text[], 'vendor datasheet (rounded)'),
    ('LTO-9', 'LTO', 9, 'L9', 400, 18000000000000, 11, 15, 70, 86, 22, array['LTO-9']::text[], array['LTO-9']::text[], 'vendor datasheet (rounded)'),
    ('3592-JD', '3592', 6, 'JD', 360, 15000000000000, 8, 11, 40, 45, 14, array['TS1155', 'TS1160']::text[], array['TS1155', 'TS1160']::text[], 'vendor datasheet (rounded)'),
    ('3592-JE', '3592', 7, 'JE', 400, 20000000000000, 8, 11, 40, 45, 14, array['TS1160']::text[], array['TS1160']::text[], 'vendor datasheet (rounded)'),
    ('3592-JF', '3592', 8, 'JF', 400, 50000000000000, 8, 11, 46, 50, 14, array['TS1170']::text[], array['TS1170']::text[], 'vendor datasheet (rounded)'),
    ('T10000D', 'T10000', 4, null, 252, 8500000000000, 11, 13, 60, 90, 23, array['T10000D']::text[], array['T10000D']::text[], 'vendor datasheet (rounded)');

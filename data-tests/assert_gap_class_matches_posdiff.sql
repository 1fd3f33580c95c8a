-- Each class agrees with the gap it was given: first files have no previous position,
-- counted gaps are 1..99, locates >= 100; posdiff is never negative.
select *
from {{ ref('fct_file_gaps') }}
where (gap_class = 'first' and prev_position is not null)
    or (gap_class = 'counted' and posdiff not between 1 and {{ locate_min_posdiff() }} - 1)
    or (gap_class = 'locate' and posdiff < {{ locate_min_posdiff() }})
    or posdiff < 0
    or gap_bytes < 0

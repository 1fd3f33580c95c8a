-- The figures' sources name the project's own documentation page (docs/domain.md), as the
-- seed data of 002 does for a new database.
update tapelens.media_types
   set source = regexp_replace(source, '\(DOMAIN\.md\)', '(docs/domain.md)')
 where source ~ '\(DOMAIN\.md\)';

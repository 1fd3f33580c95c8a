"""The admin dashboards: Superset assets (the folders beside this file), the read-only database
role and the views they read, and the Superset client."""

"""The synthetic site: realistic tape catalogs and logs with their ground truth."""

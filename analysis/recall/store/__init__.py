"""Database side of recall planning: the catalog read, byte addresses, causes of requests not
found, copies for exports, saved plans with plan against actual."""

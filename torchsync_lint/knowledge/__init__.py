"""Library knowledge as data, one small module per library."""

"""Library knowledge as data: one small module per library, each a table of what its calls
return and do (return device values, sync internally, convert to the host, wrap an iterator).

The analysis consults these tables; rules never read them directly. Adding a library is adding
rows here, not code paths in the analysis.
"""

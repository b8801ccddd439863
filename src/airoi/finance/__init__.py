"""Exact money rules, pure Python over plain data (SEMANTICS R2, R5, R8-R10, R16-R25).

Nothing here imports the web framework, the database or settings: the SQL side
aggregates, and these functions finish the figures exactly. `today` is always an
argument. Money is integer cents; conversion and averaging are exact (`Fraction`)
and rounded half to even once, so no float ever touches a cent.
"""

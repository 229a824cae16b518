# A package only so that setuptools ships the revision files; Alembic skips __init__.py.

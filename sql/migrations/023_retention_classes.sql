-- 023: the retention class registry (the Retention Config document,
-- "Declaring your own"): every class the servers of this database use,
-- with its window. Each server registers its classes (silt's standard_30d
-- and forever, the ones its silt.conf declares, the ones its queue mappings
-- derive) at startup,
-- before it listens. Classes are immutable, because rows already carry the
-- old window: a server whose silt.conf gives a registered key another
-- duration is refused at startup, naming the key.

CREATE TABLE horsies_retention_classes (
    class_key     text PRIMARY KEY,
    duration_s    bigint CHECK (duration_s > 0),   -- NULL: forever
    origin        text NOT NULL CHECK (origin IN ('silt', 'declared', 'mapping')),
    registered_at timestamptz NOT NULL DEFAULT now()
);

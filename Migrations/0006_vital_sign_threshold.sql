CREATE TABLE vital_sign_threshold (
    id INTEGER PRIMARY KEY,
    level_id INTEGER NOT NULL REFERENCES triage_level(id),
    sign TEXT NOT NULL,
    minimum REAL,
    maximum REAL,
    unit TEXT NOT NULL
);

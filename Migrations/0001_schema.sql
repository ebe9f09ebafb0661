-- Reference tables of a field triage app (release 1.0.0).
CREATE TABLE triage_level (
    id INTEGER PRIMARY KEY,
    code TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL,
    color TEXT NOT NULL,
    max_wait_minutes INTEGER
);

CREATE TABLE injury_category (
    id INTEGER PRIMARY KEY,
    code TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL,
    description TEXT
);

CREATE TABLE protocol (
    id INTEGER PRIMARY KEY,
    category_id INTEGER NOT NULL REFERENCES injury_category(id),
    level_id INTEGER NOT NULL REFERENCES triage_level(id),
    title TEXT NOT NULL,
    steps TEXT NOT NULL,      -- JSON array of instructions
    requires_physician INTEGER NOT NULL DEFAULT 0
);

-- The app's own table: incidents logged on the device. It lives in the user store
-- (.reseed-data/triage-user.sqlite), which no seed update touches; level_id and
-- category_id point at keys of the seed's triage_level and injury_category
-- (declared in reseed.json's "userReferences": SQLite cannot enforce a foreign key
-- across two database files).
CREATE TABLE incident (
    id INTEGER PRIMARY KEY,
    reported_at TEXT NOT NULL,      -- ISO 8601
    level_id INTEGER NOT NULL,      -- triage_level.id
    category_id INTEGER NOT NULL,   -- injury_category.id
    note TEXT
);

-- Indexes come after the data: building them once is faster than updating them per row.
CREATE INDEX protocol_by_category ON protocol(category_id);
CREATE INDEX protocol_by_level ON protocol(level_id);
CREATE INDEX threshold_by_level ON vital_sign_threshold(level_id);

CREATE VIEW protocol_summary AS
    SELECT p.id, c.name AS category, l.code AS level, p.title
    FROM protocol p
    JOIN injury_category c ON c.id = p.category_id
    JOIN triage_level l ON l.id = p.level_id;

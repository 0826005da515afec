INSERT INTO oldlake.items VALUES (4, 'fig', 7, '3.10'), (5, 'kiwi', 2, '0.45');
UPDATE oldlake.items SET qty = qty + 1 WHERE id IN (1, 4);
DELETE FROM oldlake.items WHERE id = 3;
ALTER TABLE oldlake.items ADD COLUMN origin VARCHAR(20) DEFAULT 'here';
UPDATE oldlake.items SET origin = 'there' WHERE id = 2;
INSERT INTO oldlake.notes VALUES ('third', 3);
CREATE TABLE oldlake.later (id INT PRIMARY KEY, v INT) DEFAULT CHARSET=utf8mb4;
INSERT INTO oldlake.later VALUES (1, 1), (2, 4);

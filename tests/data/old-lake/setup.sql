CREATE DATABASE oldlake;
CREATE TABLE oldlake.items (id INT PRIMARY KEY, name VARCHAR(40), qty INT, price DECIMAL(10,2)) DEFAULT CHARSET=utf8mb4;
CREATE TABLE oldlake.notes (msg VARCHAR(40), n INT) DEFAULT CHARSET=utf8mb4;
INSERT INTO oldlake.items VALUES (1, 'apple', 10, '1.50'), (2, 'pear', 5, '2.25'), (3, 'plum', 0, '0.99');
INSERT INTO oldlake.notes VALUES ('first', 1), ('second', 2);

package postgres

// CreateTablesSQL is Migrate's DDL, for tests that build a database the
// way MLflow leaves it.
const CreateTablesSQL = createTables

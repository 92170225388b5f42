package store

// The statements of a PostgreSQL group's keys, for the test of their plans.
var (
	QueryReadKeys                 = qReadKeys
	QueryRecordSignaturesReadKeys = qRecordSignaturesReadKeys
)

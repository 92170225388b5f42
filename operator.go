package parley

// OperatorRole is what an operator may do in the console (D19).
type OperatorRole string

// The roles: an agent works with contacts, the inbox and replies; an admin
// does everything.
const (
	RoleAgent OperatorRole = "agent"
	RoleAdmin OperatorRole = "admin"
)

// Operator is a person who signs in to the console for one brand (D19).
type Operator struct {
	ID          int64
	BrandID     int64
	Email       string
	Role        OperatorRole
	HasPassword bool
	DateCreated Time
}

// IsAdmin reports whether the operator may reach every console page.
func (o *Operator) IsAdmin() bool { return o.Role == RoleAdmin }

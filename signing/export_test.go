package signing

// ParseIMFFixdate exposes parseIMFFixdate to the external tests.
var ParseIMFFixdate = parseIMFFixdate

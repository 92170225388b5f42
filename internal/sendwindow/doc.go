// Package sendwindow decides when a marketing message may be handed to the
// provider: inside the sending window, in the recipient's local time
// (decision D17). It is pure: the caller passes the current time, nothing
// here reads a clock or a database.
//
// # Rules
//
// The window is the brand's sending_window (start included, end excluded;
// it may wrap midnight; start = end means always open; default
// 08:00–21:00), intersected, unless US rules are turned off, with the US
// rules of the embedded file us_rules.csv, which cites its sources:
//
//   - every recipient: 08:00–21:00;
//   - Florida, Oklahoma, Maryland: 08:00–20:00;
//   - Texas: 09:00–21:00 Monday to Saturday, 12:00–21:00 on Sunday.
//
// Times and weekdays are the recipient's wall-clock ones, so a window
// follows daylight saving time: 08:00 is 08:00 local on both sides of a
// change. On a spring-forward day a window opening inside the skipped hour
// opens when the clock jumps (02:30 opens at 03:00); in a repeated hour the
// first occurrence counts.
//
// # Zone and state
//
// [Zones] gives the recipient's zones: the ZIP code's zone; else the zones
// of the phone number's area code (libphonenumber); else the brand's
// time_zone (default America/New_York). When an area code spans several
// zones (South Dakota's 605 is Central and Mountain), the window must be
// open in all of them at once.
//
// [State] gives the state whose rules apply: the contact's state_code; else
// the state of a +1 number's area code (area_codes.csv, generated from
// libphonenumber's geocoding data), so that a contact without a ZIP code
// still gets their state's protection; else none, and only the 08:00–21:00
// baseline applies. The baseline applies to every recipient, in the US or
// not, while US rules are on.
//
// # Next opening
//
// [NextOpening] returns now when the window is open in every zone, else the
// first instant all are open together. When the windows never overlap
// (a brand window of 22:00–02:00 under the US rules, or zones too far
// apart), it returns [ErrNoOpening] instead of a time: the message could
// wait forever, so the caller should fail it or skip the recipient.
package sendwindow

package bench

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/jobs"
)

// ScenarioCampaignAudience times the writing of a large campaign's
// audience (issue #34: 1,000,000 recipients written in ≤ 10 s): it
// imports Users contacts into a database of its own as `parley import`
// does (the import's own statistics refresh and nothing more), every
// 50th without consent, makes a segment of them all and a MARKETING
// campaign due now, and times the scheduler's resolution (the campaign's
// start, then its audience chunk by chunk, each its own transaction, as
// a worker node runs it) from its call until every consenting member's
// message is queued. Nothing is sent.
const ScenarioCampaignAudience = "campaign-audience"

// CampaignAudienceOptions describe a campaign-audience run.
type CampaignAudienceOptions struct {
	// DB is "" for a temporary SQLite database, or a postgres:// URL in
	// whose database a schema of the run's own is created and dropped.
	DB       string
	Users    int
	Progress io.Writer
	// SQL resolves without the audience engine (--sql).
	SQL bool
	// Profile, when set, is a file for a CPU profile of the resolution.
	Profile string
	// Chunk is the users per resolution transaction (0: the default).
	Chunk int
}

// CampaignAudienceResult is what a campaign-audience run measured.
type CampaignAudienceResult struct {
	Scenario     string  `json:"scenario"`
	Engine       string  `json:"engine"`
	Users        int     `json:"users"`
	SeedS        float64 `json:"seed_s"`
	AudienceLoad float64 `json:"engine_load_s,omitempty"`
	Recipients   int64   `json:"recipients"`
	Unsubscribed int64   `json:"skipped_unsubscribed"`
	Messages     int64   `json:"messages"`
	// WrittenS is from the scheduler's call to every message queued.
	WrittenS float64 `json:"written_s"`
	CPUS     float64 `json:"bench_cpu_s"` // the run's process, the database included on SQLite
}

// noJobs takes the campaign's send job and drops it: nothing is sent.
type noJobs struct{}

func (noJobs) Insert(context.Context, *sql.Tx, *jobs.Pending) error { return nil }
func (noJobs) Wake([]string)                                        {}

// RunCampaignAudience runs the campaign-audience scenario.
func RunCampaignAudience(ctx context.Context, o CampaignAudienceOptions) (*CampaignAudienceResult, error) {
	if o.Users < 1 {
		return nil, fmt.Errorf("--users: want at least 1")
	}
	dir, err := os.MkdirTemp("", "parley-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	dsn := o.DB
	if dsn == "" {
		dsn = "sqlite:" + filepath.Join(dir, "parley.db")
	} else {
		schemaDSN, drop, err := freshSchema(ctx, o.DB)
		if err != nil {
			return nil, err
		}
		defer drop()
		dsn = schemaDSN
	}
	db, svc, closeAll, err := openService(ctx, dsn, dir, noJobs{})
	if err != nil {
		return nil, err
	}
	defer closeAll()
	progress := progressTo(o.Progress)
	res := &CampaignAudienceResult{Scenario: ScenarioCampaignAudience, Engine: db.Engine(), Users: o.Users}

	t0 := time.Now()
	progress("importing %d contacts…\n", o.Users)
	b, err := svc.CreateBrand(ctx, "Bench", "+14155550100")
	if err != nil {
		return nil, err
	}
	if _, err := svc.UpdateBrandSettings(ctx, b.ID, parley.BrandSettingsUpdate{
		SendingWindow: parley.Some(parley.SendingWindow{Start: "00:00", End: "00:00"})}); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "contacts.csv")
	if err := writeAudienceFile(path, o.Users); err != nil {
		return nil, err
	}
	if err := importFile(ctx, svc, b.ID, path, o.Users); err != nil {
		return nil, err
	}
	zip := "10001"
	seg, err := svc.CreateSegment(ctx, parley.Origin{Source: parley.SourceAdmin}, b.ID, &parley.Segment{BrandID: b.ID,
		Name: "everyone", Source: "USER_DEFINED", Type: parley.SegmentStandard, IsActive: true,
		Criteria: []parley.SegmentCriterion{{Attribute: parley.SegmentAttribute{DimensionType: parley.DimensionContact,
			FieldName: "postal_code", FieldType: parley.CustomString}, OperatorType: parley.OpEquals, StrFieldValue: &zip}}})
	if err != nil {
		return nil, err
	}
	res.SeedS = round(time.Since(t0).Seconds(), 1)
	if o.SQL {
		svc.Audience().Off = true
	} else {
		// A node that segments the brand has it in memory; the load (in
		// the background after the first question) is not the campaign's.
		s := time.Now()
		if err := svc.Audience().Load(ctx, b.ID); err != nil {
			return nil, err
		}
		res.AudienceLoad = round(time.Since(s).Seconds(), 1)
	}
	c, err := svc.CreateCampaign(ctx, parley.Origin{Source: parley.SourceAdmin}, b.ID, parley.CampaignCreate{
		Name: parley.Some("Bench"), SegmentID: parley.Some(seg.ID), Type: parley.Some(parley.TypeMarketing),
		Body: parley.Some("Acme: 20% off everything this weekend. Reply STOP to opt out.")})
	if err != nil {
		return nil, err
	}
	progress("seeded in %.1fs; resolving campaign %d\n", res.SeedS, c.ID)

	if o.Profile != "" {
		pf, err := os.Create(o.Profile)
		if err != nil {
			return nil, err
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return nil, err
		}
	}
	svc.SetResolveChunk(o.Chunk)
	cpu0 := SelfCPU()
	s := time.Now()
	n, err := svc.ResolveDueCampaigns(ctx)
	res.WrittenS = round(time.Since(s).Seconds(), 2)
	res.CPUS = round((SelfCPU() - cpu0).Seconds(), 2)
	if o.Profile != "" {
		pprof.StopCPUProfile()
	}
	if err != nil {
		return nil, err
	}
	if n != 1 {
		return nil, fmt.Errorf("resolved %d campaigns, want 1", n)
	}
	got, err := db.FindCampaign(ctx, b.ID, c.ID)
	if err != nil {
		return nil, err
	}
	resolving, err := db.CampaignResolving(ctx, b.ID, c.ID)
	if err != nil {
		return nil, err
	}
	res.Recipients, res.Unsubscribed, res.Messages = got.Stats.Recipients, got.Stats.SkippedUnsubscribed, got.Stats.Queued
	want := int64(o.Users - (o.Users+49)/50)
	if resolving || res.Recipients != int64(o.Users) || res.Messages != want {
		return nil, fmt.Errorf("campaign %d: resolving %v, %d recipients, %d queued; want %d and %d",
			c.ID, resolving, res.Recipients, res.Messages, o.Users, want)
	}
	return res, nil
}

// writeAudienceFile writes n contacts, all in ZIP 10001, every 50th
// (from the first) without consent.
func writeAudienceFile(path string, n int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	w.WriteString("phone_number,first_name,postal_code,messaging_consent\n")
	var line []byte
	for x := range n {
		line = numbers{}.appendNumber(line[:0], uint64(x))
		line = append(line, ",n,10001,"...)
		if x%50 == 0 {
			line = append(line, "false\n"...)
		} else {
			line = append(line, "true\n"...)
		}
		w.Write(line)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

// WriteText prints r for a person.
func (r *CampaignAudienceResult) WriteText(w io.Writer) error {
	_, err := fmt.Fprintf(w, "%s on %s: %d contacts (seeded in %.1fs; engine loaded in %.1fs)\n"+
		"campaign: %d recipients, %d unsubscribed, %d messages written in %.2fs (%.2fs of the process's CPU)\n",
		r.Scenario, r.Engine, r.Users, r.SeedS, r.AudienceLoad, r.Recipients, r.Unsubscribed, r.Messages, r.WrittenS, r.CPUS)
	return err
}

// WriteJSON prints r as one JSON object.
func (r *CampaignAudienceResult) WriteJSON(w io.Writer) error {
	return json.NewEncoder(w).Encode(r)
}

BEGIN TRANSACTION;
CREATE TABLE keep_audit (
	seq INTEGER NOT NULL, 
	at VARCHAR(27) NOT NULL, 
	actor TEXT NOT NULL, 
	action TEXT NOT NULL, 
	workflow VARCHAR(200), 
	target TEXT NOT NULL, 
	detail TEXT NOT NULL, 
	PRIMARY KEY (seq)
);
CREATE TABLE keep_events (
	seq INTEGER NOT NULL, 
	id VARCHAR(64) NOT NULL, 
	workflow VARCHAR(200) NOT NULL, 
	topic VARCHAR(200) NOT NULL, 
	message_id VARCHAR(200) NOT NULL, 
	title TEXT NOT NULL, 
	payload TEXT NOT NULL, 
	status VARCHAR(16) NOT NULL, 
	reserved_by VARCHAR(64), 
	created_by VARCHAR(64), 
	attempt INTEGER NOT NULL, 
	created_at VARCHAR(27) NOT NULL, 
	updated_at VARCHAR(27) NOT NULL, 
	PRIMARY KEY (seq), 
	CONSTRAINT uq_events_key UNIQUE (workflow, topic, message_id), 
	CONSTRAINT ck_events_status CHECK (status IN ('pending', 'reserved', 'consumed', 'skipped')), 
	CONSTRAINT ck_events_reserved_by CHECK (status <> 'reserved' OR reserved_by IS NOT NULL), 
	CONSTRAINT ck_events_pending CHECK (status <> 'pending' OR reserved_by IS NULL), 
	UNIQUE (id), 
	FOREIGN KEY(workflow) REFERENCES keep_workflows (name)
);
INSERT INTO "keep_events" VALUES(1,'evt_c9e9e08f5c194a7d916c07a4426284a9','mail','in','m1','Mail 1','null','pending',NULL,NULL,0,'2026-11-01T09:00:00.000000Z','2026-11-01T09:00:00.000000Z');
CREATE TABLE keep_grants (
	workflow VARCHAR(200) NOT NULL, 
	permission VARCHAR(200) NOT NULL, 
	granted_at VARCHAR(27) NOT NULL, 
	PRIMARY KEY (workflow, permission), 
	FOREIGN KEY(workflow) REFERENCES keep_workflows (name)
);
CREATE TABLE keep_handlers (
	workflow VARCHAR(200) NOT NULL, 
	name VARCHAR(200) NOT NULL, 
	kind VARCHAR(16) NOT NULL, 
	version INTEGER NOT NULL, 
	has_state BOOLEAN NOT NULL, 
	state TEXT NOT NULL, 
	wake_at VARCHAR(27), 
	next_run_at VARCHAR(27), 
	updated_at VARCHAR(27) NOT NULL, 
	PRIMARY KEY (workflow, name), 
	FOREIGN KEY(workflow) REFERENCES keep_workflows (name)
);
INSERT INTO "keep_handlers" VALUES('mail','c','consumer',1,0,'null',NULL,NULL,'2026-11-01T09:00:00.000000Z');
CREATE TABLE keep_leases (
	workflow VARCHAR(200) NOT NULL, 
	owner VARCHAR(200) NOT NULL, 
	token INTEGER NOT NULL, 
	acquired_at VARCHAR(27) NOT NULL, 
	expires_at VARCHAR(27) NOT NULL, 
	PRIMARY KEY (workflow)
);
CREATE TABLE keep_ledger (
	seq INTEGER NOT NULL, 
	id VARCHAR(64) NOT NULL, 
	run_id VARCHAR(64) NOT NULL, 
	workflow VARCHAR(200) NOT NULL, 
	handler VARCHAR(200) NOT NULL, 
	connector VARCHAR(200) NOT NULL, 
	operation VARCHAR(200) NOT NULL, 
	params TEXT NOT NULL, 
	idempotency_key TEXT NOT NULL, 
	status VARCHAR(16) NOT NULL, 
	result TEXT NOT NULL, 
	error TEXT, 
	ui_title TEXT, 
	reconcile_attempts INTEGER NOT NULL, 
	next_reconcile_at VARCHAR(27), 
	resolved_by TEXT, 
	resolved_at VARCHAR(27), 
	created_at VARCHAR(27) NOT NULL, 
	updated_at VARCHAR(27) NOT NULL, 
	PRIMARY KEY (seq), 
	CONSTRAINT uq_ledger_run UNIQUE (run_id), 
	UNIQUE (id), 
	FOREIGN KEY(run_id) REFERENCES keep_runs (id)
);
CREATE TABLE keep_runs (
	seq INTEGER NOT NULL, 
	id VARCHAR(64) NOT NULL, 
	workflow VARCHAR(200) NOT NULL, 
	workflow_version INTEGER NOT NULL, 
	handler VARCHAR(200) NOT NULL, 
	kind VARCHAR(16) NOT NULL, 
	phase VARCHAR(16) NOT NULL, 
	status VARCHAR(32) NOT NULL, 
	retry_of VARCHAR(64), 
	prepare_result TEXT NOT NULL, 
	mutation_result TEXT NOT NULL, 
	input_state TEXT NOT NULL, 
	output_state TEXT NOT NULL, 
	error TEXT, 
	failure VARCHAR(16), 
	logs TEXT NOT NULL, 
	created_at VARCHAR(27) NOT NULL, 
	updated_at VARCHAR(27) NOT NULL, 
	resume_at VARCHAR(27), 
	PRIMARY KEY (seq), 
	UNIQUE (id), 
	FOREIGN KEY(workflow) REFERENCES keep_workflows (name)
);
INSERT INTO "keep_runs" VALUES(1,'run_7af38577aa8a4a9ca91e7ba207c5a43f','mail',1,'c','consumer','preparing','paused:approval',NULL,'null','null','null','null','ctx.sheets.appendRow needs permission ''sheets.write''','permission','["host: transient failure 1: x"]','2026-11-01T09:00:00.000000Z','2026-11-01T09:00:00.000000Z',NULL);
CREATE TABLE keep_schema (
	id INTEGER NOT NULL, 
	version INTEGER NOT NULL, 
	PRIMARY KEY (id), 
	CONSTRAINT ck_keep_schema_single_row CHECK (id = 1)
);
INSERT INTO "keep_schema" VALUES(1,1);
CREATE TABLE keep_subscriptions (
	workflow VARCHAR(200) NOT NULL, 
	handler VARCHAR(200) NOT NULL, 
	topic VARCHAR(200) NOT NULL, 
	PRIMARY KEY (workflow, handler, topic), 
	FOREIGN KEY(workflow, handler) REFERENCES keep_handlers (workflow, name)
);
INSERT INTO "keep_subscriptions" VALUES('mail','c','in');
CREATE TABLE keep_workflow_versions (
	workflow VARCHAR(200) NOT NULL, 
	version INTEGER NOT NULL, 
	source TEXT NOT NULL, 
	manifest TEXT NOT NULL, 
	handlers TEXT NOT NULL, 
	created_at VARCHAR(27) NOT NULL, 
	PRIMARY KEY (workflow, version), 
	FOREIGN KEY(workflow) REFERENCES keep_workflows (name)
);
INSERT INTO "keep_workflow_versions" VALUES('mail',1,'export default Keep.workflow({})','{"topics":["in"]}','[{"name":"c","kind":"consumer","subscribe":["in"]}]','2026-11-01T09:00:00.000000Z');
CREATE TABLE keep_workflows (
	name VARCHAR(200) NOT NULL, 
	version INTEGER NOT NULL, 
	paused BOOLEAN NOT NULL, 
	created_at VARCHAR(27) NOT NULL, 
	updated_at VARCHAR(27) NOT NULL, 
	PRIMARY KEY (name)
);
INSERT INTO "keep_workflows" VALUES('mail',1,0,'2026-11-01T09:00:00.000000Z','2026-11-01T09:00:00.000000Z');
CREATE INDEX ix_audit_workflow ON keep_audit (workflow, seq);
CREATE INDEX ix_events_reserved ON keep_events (reserved_by) WHERE status = 'reserved';
CREATE INDEX ix_events_pending ON keep_events (workflow, topic, seq) WHERE status = 'pending';
CREATE UNIQUE INDEX uq_runs_one_active ON keep_runs (workflow) WHERE status = 'active';
CREATE INDEX ix_runs_workflow_status ON keep_runs (workflow, status);
CREATE INDEX ix_ledger_reconcile ON keep_ledger (next_reconcile_at) WHERE status = 'needs_reconcile';
COMMIT;

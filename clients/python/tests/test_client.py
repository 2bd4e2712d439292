"""The Client and the sending side of tasks, against a real server."""

import asyncio
import base64
import datetime as dt
import hashlib
import hmac
import json
import threading
import time

from tests.support import ServerCase

from silt import App, Client, SiltError, TaskFailed

UTC = dt.timezone.utc

RETENTION = """
[retention]
queue_retention.mapped = 7d
retention_classes.audit_1y = 365d
"""


def parse_time(text):
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


class ClientTests(ServerCase):
    config = RETENTION

    def setUp(self):
        super().setUp()
        self.client = Client(self.url)

    def count(self, queue=None):
        return len(list(self.client.iter_tasks(queue=queue or self.queue)))

    def test_send_returns_an_id_and_get_reads_the_task_back(self):
        sent = self.client.send("resize", self.queue, {"id": 7, "sizes": [1, 2]})
        self.assertTrue(sent["created"])
        task = self.client.get(sent["id"])
        self.assertEqual((task["id"], task["name"], task["queue"]), (sent["id"], "resize", self.queue))
        self.assertEqual(task["args"], {"id": 7, "sizes": [1, 2]})
        self.assertEqual((task["status"], task["priority"], task["retentionClassKey"]),
                         ("PENDING", 100, "standard_30d"))

    def test_every_send_option_reaches_the_server(self):
        before = dt.datetime.now(UTC)
        until = before + dt.timedelta(hours=1)
        retry = {"maxRetries": 3, "backoff": {"baseMs": 500, "capMs": 4000}, "jitter": 0.25, "retryOn": ["A", "B"]}
        a = self.client.send("t", self.queue, None, priority=7, delay=120, good_until=until, timeout=2.5,
                             retry=retry, idempotency_key="every-option", retention_class_key=None)
        task = self.client.get(a["id"])
        self.assertEqual(task["priority"], 7)
        self.assertGreaterEqual(parse_time(task["runAt"]), before + dt.timedelta(seconds=119))
        self.assertEqual(parse_time(task["goodUntil"]), until.replace(microsecond=until.microsecond // 1000 * 1000))
        self.assertEqual((task["timeoutMs"], task["maxRetries"]), (2500, 3))
        self.assertEqual((task["idempotencyKey"], task["retentionClassKey"]), ("every-option", "forever"))
        row = self.db.sql(f"SELECT retry_base_ms, retry_cap_ms, retry_jitter, retry_on FROM horsies_tasks "
                          f"WHERE id = '{a['id']}'")
        self.assertEqual(row, "500|4000|0.25|{A,B}")

        run_at = dt.datetime(2030, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
        b = self.client.send("t", self.queue, None, run_at=run_at, retry={"maxRetries": 1, "delaysMs": [10, 20]},
                             retention_class_key="audit_1y")
        task = self.client.get(b["id"])
        self.assertEqual((task["runAt"], task["retentionClassKey"]), ("2030-01-02T03:04:05.678Z", "audit_1y"))
        self.assertEqual(self.db.sql(f"SELECT retry_delays_ms FROM horsies_tasks WHERE id = '{b['id']}'"), "{10,20}")

    def test_send_many_sends_a_batch_and_a_bad_item_writes_nothing(self):
        sent = self.client.send_many([{"name": "t", "queue": self.queue, "args": i} for i in range(3)])
        self.assertEqual(len({s["id"] for s in sent}), 3)
        self.assertEqual([self.client.get(s["id"])["args"] for s in sent], [0, 1, 2])
        batch = [{"name": "t", "queue": self.queue}, {"name": "t", "queue": self.queue, "retention_class_key": "nope"}]
        with self.assertRaises(SiltError) as caught:
            self.client.send_many(batch)
        self.assertEqual(caught.exception.status, 400)
        self.assertTrue(caught.exception.message.startswith("tasks[1]: "), caught.exception.message)
        self.assertEqual(self.count(), 3)

    def test_an_idempotency_key_returns_the_first_task(self):
        first = self.client.send("t", self.queue, 1, idempotency_key="once")
        second = self.client.send("t", self.queue, 2, idempotency_key="once")
        self.assertEqual(second["id"], first["id"])
        self.assertEqual((first["created"], second["created"]), (True, False))
        self.assertEqual(self.client.get(first["id"])["args"], 1)

    def test_a_unique_send_passes_through_and_answers_the_holder(self):
        unique = {"key": "k", "onConflict": "replace"}
        name = f"u-{self.queue}"
        first = self.client.send(name, self.queue, 1, unique=unique)
        second = self.client.send(name, self.queue, 2, unique=unique)
        self.assertEqual(second["id"], first["id"])
        self.assertEqual((first["created"], second["created"], second["changed"]), (True, False, True))
        self.assertEqual(self.client.get(first["id"])["args"], 2)
        with self.assertRaises(ValueError):
            self.client.send("u", self.queue, unique={"kye": "k"})

    def test_list_pages_with_a_cursor_and_filters_by_status(self):
        ids = [s["id"] for s in self.client.send_many([{"name": "t", "queue": self.queue}] * 5)]
        page = self.client.list(queue=self.queue, limit=2)
        self.assertEqual([t["id"] for t in page["tasks"]], ids[:2])
        page = self.client.list(queue=self.queue, limit=2, cursor=page["nextCursor"])
        self.assertEqual([t["id"] for t in page["tasks"]], ids[2:4])
        self.assertEqual([t["id"] for t in self.client.iter_tasks(queue=self.queue, page_size=2)], ids)
        self.client.cancel(ids[0])
        self.assertEqual([t["id"] for t in self.client.list(queue=self.queue, status="CANCELLED")["tasks"]], ids[:1])

    def test_cancel_of_a_pending_task_ends_it_cancelled(self):
        app = App(client=self.client)
        task = app.task(lambda: None, name="never", queue=self.queue)
        h = task.send()
        reply = h.cancel()
        self.assertEqual((reply["status"], reply["cancelled"]), ("CANCELLED", True))
        with self.assertRaises(TaskFailed) as caught:
            h.result(timeout=5)
        self.assertEqual(caught.exception.status, "CANCELLED")
        self.assertEqual(h.attempts(), [])

    def test_get_with_wait_answers_when_the_wait_is_over_and_result_times_out(self):
        sent = self.client.send("t", self.queue)
        started = time.monotonic()
        self.assertEqual(self.client.get(sent["id"], wait=0.3)["status"], "PENDING")
        self.assertGreaterEqual(time.monotonic() - started, 0.25)
        app = App(client=self.client)
        with self.assertRaises(TimeoutError):
            app.task(lambda: None, name="t", queue=self.queue).send().result(timeout=0.2)

    def test_unknown_ids_are_404_and_malformed_ones_400(self):
        with self.assertRaises(SiltError) as caught:
            self.client.get("01a2494a-c77a-7345-bbbf-9cfb0f40bdd7")
        self.assertEqual(caught.exception.status, 404)
        with self.assertRaises(SiltError) as caught:
            self.client.attempts("not-a-uuid")
        self.assertEqual((caught.exception.status, caught.exception.field), (400, "id"))

    def test_with_options_retention_class_key_beats_the_queue_mapping(self):
        app = App(client=self.client)

        @app.task(queue="mapped")
        def archive(doc):
            return doc

        mapped = archive.send(doc=1)
        chosen = archive.with_options(retention_class_key="standard_30d").send(doc=2)
        declared = archive.with_options(retention_class_key="audit_1y", priority=10).send(doc=3)
        self.assertEqual(mapped.get()["retentionClassKey"], "q_mapped_7d")
        self.assertEqual(chosen.get()["retentionClassKey"], "standard_30d")
        self.assertEqual((declared.get()["retentionClassKey"], declared.get()["priority"]), ("audit_1y", 10))

    def test_bad_options_and_bad_calls_raise_before_anything_is_sent(self):
        app = App(client=self.client)

        @app.task(queue=self.queue)
        def send_email(to, subject="hi"):
            return to

        naive = dt.datetime(2030, 1, 1)
        cases = [
            (ValueError, "priority", dict(priority=0)),
            (TypeError, "priority", dict(priority="1")),
            (ValueError, "delay", dict(delay=-1)),
            (ValueError, "delay", dict(delay=dt.timedelta(days=367))),
            (ValueError, "run_at", dict(delay=5, run_at=dt.datetime.now(UTC))),
            (ValueError, "run_at", dict(run_at=naive)),
            (ValueError, "timeout", dict(timeout=0)),
            (ValueError, "max_retries", dict(retry={"max_retries": 1})),
            (ValueError, "capMs", dict(retry={"backoff": {"baseMs": 500, "capMs": 100}})),
            (ValueError, "maxRetries", dict(retry={"maxRetries": 21})),
            (ValueError, "idempotency_key", dict(idempotency_key="k" * 201)),
            (TypeError, "retention_class_key", dict(retention_class_key=5)),
            (TypeError, "priorty", dict(priorty=5)),
        ]
        for exc, word, options in cases:
            with self.subTest(options=options):
                with self.assertRaises(exc) as caught:
                    send_email.with_options(**options).send("a@b")
                self.assertIn(word, str(caught.exception))
        with self.assertRaises(TypeError):
            send_email.send("a@b", "s", "extra")           # more than the signature takes
        with self.assertRaises(TypeError):
            send_email.send(subject="no to")               # a required argument missing
        with self.assertRaises(TypeError):
            send_email.send(to=object())                   # not JSON
        with self.assertRaises(TypeError):
            send_email.send(to=float("nan"))               # not JSON either (NaN)
        with self.assertRaises(ValueError):
            self.client.send("t", self.queue, priority=101)
        self.assertEqual(self.count(), 0)

    def test_a_server_refusal_reaches_the_caller_with_its_message_and_field(self):
        app = App(client=self.client)
        task = app.task(lambda: None, name="t", queue=self.queue)
        with self.assertRaises(SiltError) as caught:
            task.with_options(retention_class_key="nope").send()
        self.assertEqual((caught.exception.status, caught.exception.field), (400, "retentionClassKey"))
        self.assertIn("unknown retention class nope", caught.exception.message)
        self.assertEqual(self.count(), 0)

    def test_workflows_start_get_list_pause_resume_and_cancel(self):
        name = f"wf_{self.queue}"
        definition = {"name": name, "output": "b", "nodes": [
            {"id": "a", "task": "extract", "queue": self.queue, "args": {"n": 1}},
            {"id": "b", "task": "load", "queue": self.queue, "waitsFor": ["a"], "argsFrom": {"rows": "a"}}]}
        wf = self.client.start_workflow(definition)
        self.assertEqual(wf["status"], "RUNNING")
        got = self.client.get_workflow(wf["id"])
        self.assertEqual([(n["id"], n["status"]) for n in got["nodes"]], [("a", "ENQUEUED"), ("b", "PENDING")])
        self.assertEqual(self.client.pause_workflow(wf["id"])["status"], "PAUSED")
        self.assertEqual(self.client.resume_workflow(wf["id"])["status"], "RUNNING")
        listed = self.client.list_workflows(name=name)["workflows"]
        self.assertEqual([w["id"] for w in listed], [wf["id"]])
        self.assertEqual(self.client.cancel_workflow(wf["id"])["status"], "CANCELLED")
        self.assertEqual(self.client.get_workflow(wf["id"], wait=5)["status"], "CANCELLED")
        bad = {"name": name, "output": "zz", "nodes": [{"id": "a", "task": "t", "queue": self.queue, "waitsFor": ["a"]}]}
        with self.assertRaises(SiltError) as caught:
            self.client.start_workflow(bad)
        self.assertEqual(caught.exception.status, 400)
        self.assertGreaterEqual(len(caught.exception.problems), 2)

    def test_a_client_is_shared_by_threads_each_on_its_own_kept_alive_connection(self):
        ids, errors = [], []

        def sender():
            try:
                conn = self.client.transport.connection()
                first = self.client.send("t", self.queue)["id"]
                sock = conn._conn.sock
                ids.append(first)
                for _ in range(19):
                    ids.append(self.client.send("t", self.queue)["id"])
                if conn._conn.sock is not sock:
                    errors.append("the connection was not kept alive")
            except Exception as exc:
                errors.append(exc)

        threads = [threading.Thread(target=sender) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        self.assertEqual(len(set(ids)), 160)
        self.assertEqual(self.count(), 160)

    def test_send_async_returns_a_handle(self):
        app = App(client=self.client)
        task = app.task(lambda n: n, name="t", queue=self.queue)

        async def go():
            h = await task.with_options(priority=3).send_async(n=4)
            return h, await self.client.run_async(self.client.get, h.id)

        h, got = asyncio.run(go())
        self.assertEqual((got["id"], got["args"], got["priority"]), (h.id, {"n": 4}, 3))


def hs256(claims, secret):
    def b64(data):
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()
    head = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    body = b64(json.dumps(claims).encode())
    sig = hmac.new(secret.encode(), f"{head}.{body}".encode(), hashlib.sha256).digest()
    return f"{head}.{body}.{b64(sig)}"


class TokenTests(ServerCase):
    server_env = {"JWT_ENABLED": "true", "JWT_SECRET": "py-client-secret-of-thirty-two-bytes"}

    def test_the_token_is_sent_as_a_bearer_token(self):
        with self.assertRaises(SiltError) as caught:
            Client(self.url).send("t", self.queue)
        self.assertEqual((caught.exception.status, caught.exception.message), (401, "authentication required"))
        token = hs256({"sub": "py", "role": "read-write", "exp": int(time.time()) + 600}, "py-client-secret-of-thirty-two-bytes")
        client = Client(self.url, token=token)
        sent = client.send("t", self.queue, {"ok": True})
        self.assertEqual(client.get(sent["id"])["args"], {"ok": True})

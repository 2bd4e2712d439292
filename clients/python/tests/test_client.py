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

    def test_a_rate_key_is_sent_kept_and_listed_and_a_bad_one_raises_before_sending(self):
        keyed = self.client.send("hook", self.queue, rate_key="customer-7")
        plain = self.client.send("hook", self.queue)
        app = App(client=self.client)
        task = app.task(lambda: None, name="hook", queue=self.queue, rate_key="customer-8")
        h = task.send()
        self.assertEqual(self.client.get(keyed["id"])["rateKey"], "customer-7")
        self.assertEqual(h.get()["rateKey"], "customer-8")
        self.assertEqual([t["rateKey"] for t in self.client.list(queue=self.queue)["tasks"]],
                         ["customer-7", None, "customer-8"])
        self.assertEqual(self.client.get(plain["id"])["rateKey"], None)
        for exc, value in ((TypeError, ""), (ValueError, "k" * 256), (TypeError, 7)):
            with self.subTest(value=value):
                with self.assertRaises(exc) as caught:
                    self.client.send("hook", self.queue, rate_key=value)
                self.assertIn("rate_key", str(caught.exception))
        self.assertEqual(self.count(), 3)

    def test_unique_debounce_says_changed_and_a_bad_unique_is_the_servers_400_naming_the_member(self):
        app = App(client=self.client)
        task = app.task(lambda site: site, name=f"d_{self.queue}", queue=self.queue,
                        unique={"key": "site-3", "onConflict": "debounce"})
        first = task.with_options(delay=60).send(site=3)
        self.assertEqual((first.created, first.changed), (True, False))
        run_at = parse_time(first.get()["runAt"])
        again = task.with_options(delay=120).send(site=3)
        self.assertEqual((again.id, again.created, again.changed), (first.id, False, True))
        self.assertGreater(parse_time(again.get()["runAt"]), run_at + dt.timedelta(seconds=50))
        self.assertIsNone(app.task(lambda: None, name="plain", queue=self.queue).send().changed)
        cases = [({"byArgs": True, "onConflict": "replace"}, "unique.onConflict"),
                 ({"key": "k", "while": "forever"}, "unique.while"),
                 ({"key": "k", "byArgs": True}, "unique")]
        for unique, field in cases:
            with self.subTest(unique=unique):
                with self.assertRaises(SiltError) as caught:
                    self.client.send("u", self.queue, unique=unique)
                self.assertEqual((caught.exception.status, caught.exception.field), (400, field))
        self.assertEqual(self.count(), 2)

    def test_rerun_sends_an_ended_task_again_once_with_overrides_and_rerun_of(self):
        sent = self.client.send("r", self.queue, {"n": 1}, rate_key="rk", priority=50, retry={"maxRetries": 2})
        with self.assertRaises(SiltError) as caught:
            self.client.rerun(sent["id"])
        self.assertEqual(caught.exception.status, 409)
        self.client.cancel(sent["id"])
        rerun = self.client.rerun(sent["id"], priority=10, timeout=2.5)
        self.assertEqual((rerun["rerunOf"], rerun["created"]), (sent["id"], True))
        task = self.client.get(rerun["id"])
        self.assertEqual((task["rerunOf"], task["status"], task["priority"], task["timeoutMs"], task["maxRetries"],
                          task["rateKey"], task["args"], task["attempt"]),
                         (sent["id"], "PENDING", 10, 2500, 2, "rk", {"n": 1}, 0))
        self.assertIsNone(self.client.get(sent["id"])["rerunOf"])
        self.assertEqual(self.client.rerun(sent["id"], priority=99), {"id": rerun["id"], "rerunOf": sent["id"],
                                                                      "created": False, "workflowId": None,
                                                                      "workflowStatus": None})
        app = App(client=self.client)
        handle = app.task(lambda: None, name="r", queue=self.queue).send()
        handle.cancel()
        moved = handle.rerun(name="r2", queue=f"{self.queue}_to", args=None, retry={}, retention_class_key=None)
        got = moved.get()
        self.assertEqual((got["name"], got["queue"], got["args"], got["maxRetries"], got["retentionClassKey"],
                          got["rerunOf"], moved.created), ("r2", f"{self.queue}_to", None, 0, "forever", handle.id, True))
        self.client.cancel(moved.id)
        with self.assertRaises(SiltError) as caught:
            self.client.rerun(moved.id, retention_class_key="nope")
        self.assertEqual((caught.exception.status, caught.exception.field), (400, "retentionClassKey"))
        with self.assertRaises(SiltError) as caught:
            self.client.rerun("not-a-uuid")
        self.assertEqual((caught.exception.status, caught.exception.field), (400, "id"))
        with self.assertRaises(ValueError):
            self.client.rerun(moved.id, priority=0)
        with self.assertRaises(TypeError):
            self.client.rerun(moved.id, prio=1)
        self.assertEqual(self.count(f"{self.queue}_to"), 1)

    def test_rerun_many_counts_with_dry_run_then_reruns_a_limit_at_a_time(self):
        sent = [s["id"] for s in self.client.send_many([{"name": "m", "queue": self.queue, "args": i} for i in range(3)])]
        kept = self.client.send("m", self.queue, 4)["id"]
        for task_id in sent:
            self.client.cancel(task_id)
        self.assertEqual(self.client.rerun_many(queue=self.queue, status="CANCELLED", dry_run=True),
                         {"dryRun": True, "count": 3, "more": False})
        self.assertEqual(self.count(), 4)
        hour_ago = dt.datetime.now(UTC) - dt.timedelta(hours=1)
        first = self.client.rerun_many(queue=self.queue, limit=2, priority=3, finished_after=hour_ago)
        self.assertEqual((first["dryRun"], first["count"], first["more"]), (False, 2, True))
        self.assertEqual([t["rerunOf"] for t in first["tasks"]], sent[:2])
        self.assertEqual(self.client.get(first["tasks"][0]["id"])["priority"], 3)
        second = self.client.rerun_many(queue=self.queue, limit=2)
        self.assertEqual((second["count"], second["more"], [t["rerunOf"] for t in second["tasks"]]),
                         (1, False, sent[2:]))
        self.assertEqual(self.client.rerun_many(queue=self.queue, dry_run=True)["count"], 0)
        self.assertEqual(self.count(), 7)
        self.assertEqual(self.client.get(kept)["status"], "PENDING")
        with self.assertRaises(SiltError) as caught:
            self.client.rerun_many(queue=self.queue, retention_class_key="nope")
        self.assertEqual((caught.exception.status, caught.exception.field), (400, "retentionClassKey"))
        with self.assertRaises(ValueError):
            self.client.rerun_many(queue=self.queue, status="RUNNING")
        with self.assertRaises(ValueError):
            self.client.rerun_many(queue=self.queue, finished_before=dt.datetime(2030, 1, 1))   # naive
        self.assertEqual(self.count(), 7)

    def test_list_searches_names_orders_newest_first_and_counts_the_total(self):
        ids = [s["id"] for s in self.client.send_many([{"name": n, "queue": self.queue}
                                                      for n in ("alpha-one", "beta", "Alpha-two")])]
        found = self.client.list(queue=self.queue, search="ALPHA")
        self.assertEqual([t["id"] for t in found["tasks"]], [ids[0], ids[2]])
        self.assertEqual((found["total"], found["totalCapped"]), (2, False))
        newest = self.client.list(queue=self.queue, order="desc", limit=2)
        self.assertEqual([t["id"] for t in newest["tasks"]], [ids[2], ids[1]])
        self.assertEqual([t["id"] for t in self.client.iter_tasks(queue=self.queue, order="desc", page_size=2)],
                         ids[::-1])
        with self.assertRaises(ValueError):
            self.client.list(order="newest")

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

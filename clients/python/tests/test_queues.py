"""Task queues and schedules against a server whose silt.conf declares its
queues (so an undeclared one is refused), a limit per rate key and a
schedule of its own (origin "config")."""

from tests.support import ServerCase, wait_until

from silt import App, Client, SiltError

CONFIG = """
[queue.images]

[queue.keyed]
rate_limit_per_key = 1/1h

[schedule.nightly]
cron = 30 3 * * *
task = report
queue = images
"""


class QueueTests(ServerCase):
    config = CONFIG

    def setUp(self):
        super().setUp()
        self.client = Client(self.url)

    def refused(self, status, field, fn, *args, **kwargs):
        with self.assertRaises(SiltError) as caught:
            fn(*args, **kwargs)
        self.assertEqual((caught.exception.status, caught.exception.field), (status, field), caught.exception.message)

    def test_the_queue_list_shows_the_declared_queues_and_their_limits(self):
        listed = self.client.list_queues()
        self.assertEqual(sorted(q["queue"] for q in listed["queues"]), ["images", "keyed"])
        keyed = next(q for q in listed["queues"] if q["queue"] == "keyed")
        self.assertEqual((keyed["rateLimitPerKey"], keyed["rateLimit"], keyed["paused"]),
                         ({"limit": 1, "periodMs": 3_600_000}, None, False))

    def test_a_paused_queue_keeps_its_tasks_until_it_is_resumed(self):
        paused = self.client.pause_queue("images")
        self.assertEqual((paused["queue"], paused["paused"], paused["changed"]), ("images", True, True))
        self.assertIsNotNone(paused["pausedAt"])
        self.addCleanup(self.client.resume_queue, "images")
        self.assertEqual(self.client.pause_queue("images"), dict(paused, changed=False))
        listed = self.client.list_queues()
        self.assertEqual(listed["paused"], [{"queue": "images", "pausedAt": paused["pausedAt"]}])
        self.assertTrue(next(q for q in listed["queues"] if q["queue"] == "images")["paused"])

        app = App(client=self.client)
        double = app.task(lambda n: n * 2, name="double", queue="images")
        h = double.send(n=21)
        parked = self.server.metric("silt_task_claims_parked") or 0
        self.start_worker(app, queues=["images"])
        # The worker's claim, made after the send, took nothing and waits in the server.
        wait_until(lambda: self.server.metric("silt_task_claims_parked") > parked, what="the worker's claim to park")
        self.assertEqual(h.get()["status"], "PENDING")
        self.assertEqual(self.client.resume_queue("images"),
                         {"queue": "images", "paused": False, "pausedAt": None, "changed": True})
        self.assertEqual(h.result(timeout=20), 42)
        self.assertFalse(self.client.resume_queue("images")["changed"])
        self.assertEqual(self.client.list_queues()["paused"], [])

    def test_pausing_a_queue_the_server_does_not_know_is_refused(self):
        self.refused(404, None, self.client.pause_queue, "undeclared")
        self.refused(400, "queue", self.client.resume_queue, "q" * 256)
        with self.assertRaises(TypeError):
            self.client.pause_queue("")

    def test_a_rate_key_is_counted_by_its_queues_limit_per_key(self):
        app = App(client=self.client)
        app.task(lambda tag: tag, name="hook", queue="keyed")
        # One request: all three exist before any claim looks.
        a1, a2, b1 = (s["id"] for s in self.client.send_many([
            {"name": "hook", "queue": "keyed", "args": {"tag": "a1"}, "rate_key": "a"},
            {"name": "hook", "queue": "keyed", "args": {"tag": "a2"}, "rate_key": "a"},
            {"name": "hook", "queue": "keyed", "args": {"tag": "b1"}, "rate_key": "b"}]))
        worker = self.start_worker(app, queues=["keyed"], concurrency=4)
        self.assertEqual(self.client.get(a1, wait=20)["result"], "a1")
        self.assertEqual(self.client.get(b1, wait=20)["result"], "b1")
        # a's window (one claim an hour) is full: its second task waits.
        second = self.client.get(a2)
        self.assertEqual((second["status"], second["rateKey"]), ("PENDING", "a"))
        worker.stop()
        self.client.cancel(a2)

    def test_schedules_are_created_read_changed_paused_resumed_and_deleted(self):
        self.assertEqual([(s["name"], s["origin"]) for s in self.client.list_schedules()], [("nightly", "config")])
        made = self.client.create_schedule("hourly-sync", "0 * * * *", "sync", "images", args={"full": False},
                                           catch_up=2, priority=5, timezone="Europe/Paris")
        self.assertEqual((made["name"], made["origin"], made["paused"], made["cron"], made["task"], made["queue"],
                          made["args"], made["catchUp"], made["priority"], made["timezone"]),
                         ("hourly-sync", "api", False, "0 * * * *", "sync", "images", {"full": False}, 2, 5,
                          "Europe/Paris"))
        self.assertIsNotNone(made["nextFire"])
        self.assertEqual(self.client.get_schedule("hourly-sync"), made)
        self.assertEqual([s["name"] for s in self.client.list_schedules()], ["hourly-sync", "nightly"])
        changed = self.client.change_schedule("hourly-sync", cron="*/30 * * * *", priority=None)
        self.assertEqual((changed["cron"], changed["priority"], changed["catchUp"], changed["args"]),
                         ("*/30 * * * *", None, 2, {"full": False}))
        paused = self.client.pause_schedule("hourly-sync")
        self.assertEqual((paused["paused"], paused["nextFire"]), (True, None))
        self.assertEqual(self.client.pause_schedule("hourly-sync")["pausedAt"], paused["pausedAt"])
        resumed = self.client.resume_schedule("hourly-sync")
        self.assertEqual((resumed["paused"], resumed["pausedAt"]), (False, None))
        self.assertIsNotNone(resumed["nextFire"])
        self.assertEqual(self.client.delete_schedule("hourly-sync"), {"name": "hourly-sync", "deleted": True})
        self.refused(404, None, self.client.get_schedule, "hourly-sync")
        self.assertEqual([s["name"] for s in self.client.list_schedules()], ["nightly"])

    def test_schedule_refusals_are_the_servers_naming_the_field(self):
        c = self.client
        self.refused(400, "cron", c.create_schedule, "bad-one", "61 * * * *", "sync", "images")
        self.refused(400, "queue", c.create_schedule, "bad-one", "0 * * * *", "sync", "undeclared")
        self.refused(400, "name", c.create_schedule, "no spaces", "0 * * * *", "sync", "images")
        self.refused(409, "name", c.create_schedule, "nightly", "0 * * * *", "sync", "images")
        self.assertTrue(c.create_schedule("bad-one", "0 * * * *", "sync", "images", paused=True)["paused"])
        self.addCleanup(c.delete_schedule, "bad-one")
        self.refused(409, "name", c.create_schedule, "bad-one", "0 * * * *", "sync", "images")
        self.refused(400, "timezone", c.change_schedule, "bad-one", timezone="Mars/Olympus")
        self.refused(400, "catchUp", c.change_schedule, "bad-one", catch_up=5000)
        self.refused(409, "name", c.change_schedule, "nightly", cron="0 4 * * *")
        self.refused(409, "name", c.pause_schedule, "nightly")
        self.refused(409, "name", c.resume_schedule, "nightly")
        self.refused(409, "name", c.delete_schedule, "nightly")
        self.refused(404, None, c.pause_schedule, "no-such")
        with self.assertRaises(SiltError) as caught:
            c.change_schedule("bad-one")
        self.assertEqual(caught.exception.status, 400)
        self.assertEqual(c.get_schedule("bad-one")["timezone"], "UTC")
        with self.assertRaises(TypeError):
            c.change_schedule("bad-one", catchUp=1)       # the Python names, not the wire's
        with self.assertRaises(TypeError):
            c.get_schedule("")

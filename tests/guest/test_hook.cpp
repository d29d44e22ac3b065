// test_hook.cpp — cos-oci-hook as container runtimes run it: bad state or annotations are refused
// with a clear error and no task touched; with crun (from Debian) and a busybox bundle, an
// annotated container's processes are COS tasks of the running lord, with the class and CPUs it
// asked for, while an unannotated one is left alone.
// See docs/testing.md.
#include <catch2/catch_test_macros.hpp>

#include <fstream>
#include <memory>
#include <set>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "guest.h"
extern "C" {
#include "internal.h"	/* the lord's hint cache (libcos/hint_cache.c) */
}

using namespace guest;

namespace {

const std::string DIR = "/tmp/cos-hook-test";
/* the operator's rules the hooks of these tests read (--config); none: no rules */
const std::string RULES = DIR + "/containers.json";

void rules(const std::string &json)
{
	mkdir(DIR.c_str(), 0755);
	std::ofstream(RULES) << json;
}

/* The rules go with the test case that wrote them, whatever way it ends. */
struct RulesScope {
	~RulesScope() { unlink(RULES.c_str()); }
};

/* Run the hook (with @args) with @state on stdin; its exit status, and its stderr in *err. */
int hook(const std::string &state, std::string *err = nullptr, const std::string &args = "")
{
	mkdir(DIR.c_str(), 0755);
	std::ofstream(DIR + "/state.json") << state;
	std::string out;
	int st = sh(build_path("bin/cos-oci-hook") + " " + args + " <" + DIR + "/state.json 2>&1", &out);
	if (err)
		*err = out;
	return st;
}

std::string policy_of(pid_t pid) { return proc_field(pid, "sched", "policy"); }
std::string cpus_of(pid_t pid) { return proc_field(pid, "status", "Cpus_allowed_list"); }

/* The CPU @pid last ran on (field 39 of its stat). */
int cpu_of(pid_t pid)
{
	std::string s = read_file("/proc/" + std::to_string(pid) + "/stat");
	size_t p = s.rfind(')');
	std::istringstream in(p == std::string::npos ? "" : s.substr(p + 2));
	std::string f;
	for (int i = 3; i <= 39 && in >> f; i++)
		;
	return in ? std::stoi(f) : -1;
}

std::string state_json(pid_t pid, const std::string &annotations)
{
	return "{\"ociVersion\": \"1.2.0\", \"id\": \"t1\", \"status\": \"creating\", \"pid\": " +
	       std::to_string(pid) + ", \"bundle\": \"/tmp\", \"annotations\": {" + annotations + "}}";
}

/* A process that is nobody's container: sleeps in the root cgroup, SCHED_OTHER. */
struct Bystander {
	pid_t pid;
	Bystander()
	{
		pid = fork();
		if (pid == 0) {
			execlp("sleep", "sleep", "60", (char *)nullptr);
			_exit(127);
		}
		REQUIRE(pid > 0);
	}
	~Bystander()
	{
		kill(pid, SIGKILL);
		waitpid(pid, nullptr, 0);
	}
};

/* A busybox bundle for crun: the hook at createRuntime, @annotations, @cmd run by sh -c. */
std::string bundle(const std::string &name, const std::string &annotations, const std::string &cmd)
{
	std::string b = DIR + "/" + name;
	REQUIRE(sh("rm -rf " + b + " && mkdir -p " + b + "/rootfs/bin " + b + "/rootfs/proc " + b + "/rootfs/dev && "
		   "cp /bin/busybox " + b + "/rootfs/bin/ && "
		   "for a in sh sleep yes cat; do ln -s busybox " + b + "/rootfs/bin/$a; done") == 0);
	std::ofstream(b + "/config.json") <<
		"{\"ociVersion\": \"1.2.0\",\n"
		" \"process\": {\"terminal\": false, \"user\": {\"uid\": 0, \"gid\": 0},\n"
		"   \"args\": [\"/bin/sh\", \"-c\", \"" + cmd + "\"], \"env\": [\"PATH=/bin\"], \"cwd\": \"/\"},\n"
		" \"root\": {\"path\": \"rootfs\", \"readonly\": true},\n"
		" \"hostname\": \"" + name + "\",\n"
		" \"mounts\": [{\"destination\": \"/proc\", \"type\": \"proc\", \"source\": \"proc\"}],\n"
		" \"linux\": {\"namespaces\": [{\"type\": \"pid\"}, {\"type\": \"mount\"}, {\"type\": \"ipc\"},\n"
		"   {\"type\": \"uts\"}]},\n"
		" \"annotations\": {" + annotations + "},\n"
		" \"hooks\": {\"createRuntime\": [{\"path\": \"" + build_path("bin/cos-oci-hook") + "\",\n"
		"   \"args\": [\"cos-oci-hook\", \"--config\", \"" + RULES + "\"]}]}}\n";
	return b;
}

/* A container made with `crun create` and started; killed and deleted at the end of the scope. */
struct Container {
	std::string id, err;
	int created;
	Container(const std::string &id_, const std::string &bundle_dir) : id(id_)
	{
		sh("crun delete -f " + id + " 2>/dev/null");
		/* not through a pipe: the container's process inherits crun's stdout and stderr */
		std::string log = bundle_dir + "/crun.log";
		created = sh("crun create --bundle " + bundle_dir + " " + id + " >" + log + " 2>&1 </dev/null");
		err = read_file(log);
		if (created == 0)
			REQUIRE(sh("crun start " + id) == 0);
	}
	/* The processes of its cgroup. */
	std::vector<pid_t> procs()
	{
		std::string st, cg;
		REQUIRE(sh("crun state " + id, &st) == 0);
		size_t p = st.find("\"pid\"");
		REQUIRE(p != std::string::npos);
		pid_t init = std::stoi(st.substr(st.find(':', p) + 1));
		cg = proc_field(init, "cgroup", "0::");
		std::ifstream f("/sys/fs/cgroup" + cg + "/cgroup.procs");
		std::vector<pid_t> v;
		for (pid_t x; f >> x;)
			v.push_back(x);
		return v;
	}
	std::string cgroup_dir(pid_t pid) { return "/sys/fs/cgroup" + proc_field(pid, "cgroup", "0::"); }
	~Container()
	{
		sh("crun kill " + id + " KILL 2>/dev/null; crun delete -f " + id + " 2>/dev/null");
	}
};

/* The xattr @name of the cgroup of @pid, "" without one. */
std::string cgroup_xattr(pid_t pid, const char *name)
{
	char v[16] = "";
	ssize_t n = getxattr(("/sys/fs/cgroup" + proc_field(pid, "cgroup", "0::")).c_str(), name, v,
			     sizeof(v) - 1);
	return std::string(v, n > 0 ? n : 0);
}

/* The processes of a container once they are there: sh's two `yes` and the sleep it becomes. */
std::vector<pid_t> wait_procs(Container &c, size_t n)
{
	std::vector<pid_t> v;
	for (int i = 0; i < 300 && v.size() < n; i++) {
		std::this_thread::sleep_for(std::chrono::milliseconds(20));
		v = c.procs();
	}
	return v;
}

/*
 * Has each of @pids started as a COS task: running as one now, or with CPU time as one
 * (GET_TASKS)?  With a lord, it was placed.
 */
bool ran_as_cos(const std::vector<pid_t> &pids)
{
	cos_task_info *tasks = nullptr;
	size_t nr = 0;
	int fd = cos_open();
	if (fd < 0)
		return false;
	int err = cos_get_tasks(fd, &tasks, &nr);
	close(fd);
	if (err)
		return false;
	std::set<pid_t> ran;
	for (size_t i = 0; i < nr; i++)
		if (tasks[i].state == COS_TASK_RUNNING || tasks[i].runtime_ns)
			ran.insert(tasks[i].pid);
	free(tasks);
	for (pid_t p : pids)
		if (!ran.count(p))
			return false;
	return true;
}

/* The one process of container @c (created: checked), once it runs. */
pid_t started(Container &c)
{
	INFO(c.err);
	REQUIRE(c.created == 0);
	std::vector<pid_t> in = wait_procs(c, 1);
	REQUIRE(in.size() == 1);
	return in[0];
}

/* The shim, and cos-fifo registered as enclave 'batch' on @cpus, for crun containers. */
struct BatchLord {
	Shim shim;
	std::unique_ptr<PolicyProc> lord;
	explicit BatchLord(const char *cpus)
	{
		REQUIRE(access("/usr/bin/crun", X_OK) == 0);
		REQUIRE_LORD_SUPPORT();
		lord = std::make_unique<PolicyProc>(std::vector<std::string>{build_path("bin/cos-fifo"),
			"--name", "batch", "--cpus", cpus, "--stall-ms", stall_arg(1000)});
		REQUIRE(lord->wait_for("enclave 'batch'"));
	}
};

} // namespace

TEST_CASE("cos-oci-hook refuses malformed state and bad annotations with a clear error, touching no task", "[hook]")
{
	Bystander by;
	std::string policy0 = policy_of(by.pid), cpus0 = cpus_of(by.pid), err;
	REQUIRE(!policy0.empty());
	const std::string pol = "\"io.cos.policy\": \"fifo\"";
	struct {
		std::string state, says;
	} bad[] = {
		{ "{\"ociVersion\": \"1.2.0\", \"id\": \"t1\", \"pid\": ", "malformed state JSON" },
		{ "", "malformed state JSON" },
		{ "[1, 2]", "not a JSON object" },
		{ "{\"ociVersion\": \"1\", \"id\": \"a\", \"id\": \"b\", \"pid\": 5}", "duplicate" },
		{ "{\"ociVersion\": \"1.2.0\", \"pid\": " + std::to_string(by.pid) + "}", "\"id\"" },
		{ "{\"ociVersion\": \"1.2.0\", \"id\": \"t1\", \"pid\": \"" + std::to_string(by.pid) +
		  "\", \"annotations\": {" + pol + "}}", "\"pid\"" },
		{ "{\"ociVersion\": \"1.2.0\", \"id\": \"t1\", \"pid\": " + std::to_string(by.pid) +
		  ", \"annotations\": [\"fifo\"]}", "\"annotations\" is not an object" },
		{ state_json(by.pid, "\"io.cos.policy\": 1"), "io.cos.policy is not a string" },
		{ state_json(by.pid, "\"io.cos.policy\": \"fifo; kill -9 1\""), "not a policy name" },
		{ state_json(by.pid, "\"io.cos.policy\": \"\""), "not a policy name" },
		{ state_json(by.pid, pol + ", \"io.cos.class\": \"0\""), "io.cos.class '0'" },
		{ state_json(by.pid, pol + ", \"io.cos.class\": \"1x\""), "io.cos.class '1x'" },
		{ state_json(by.pid, pol + ", \"io.cos.enclave\": \"3-1\""), "io.cos.enclave '3-1'" },
		{ state_json(by.pid, pol + ", \"io.cos.enclave\": \"1,,2\""), "io.cos.enclave '1,,2'" },
		{ state_json(by.pid, pol + ", \"io.cos.enclave\": \"99999\""), "io.cos.enclave" },
		{ state_json(by.pid, pol + ", \"io.cos.polcy\": \"fifo\""), "unknown annotation io.cos.polcy" },
		{ state_json(by.pid, "\"io.cos.class\": \"1\""), "without io.cos.policy" },
		{ state_json(1, pol), "no valid \"pid\"" },
		{ state_json(999999, pol), "does not exist" },
		/* a real process, but in the root cgroup with everything else: not a container's */
		{ state_json(by.pid, pol), "holds the runtime too" },
	};
	for (auto &b : bad) {
		CAPTURE(b.state);
		CHECK(hook(b.state, &err) == 1);
		CAPTURE(err);
		CHECK(err.rfind("cos-oci-hook: ", 0) == 0);
		CHECK(err.find(b.says) != std::string::npos);
	}
	/* no io.cos.policy: nothing to do, nothing said */
	CHECK(hook(state_json(by.pid, "\"org.example\": \"x\""), &err) == 0);
	CHECK(err.empty());
	CHECK(hook("{\"ociVersion\": \"1.2.0\", \"id\": \"t1\", \"pid\": 5}", &err) == 0);
	CHECK(policy_of(by.pid) == policy0);
	CHECK(cpus_of(by.pid) == cpus0);

	CHECK(sh(build_path("bin/cos-oci-hook") + " --help | grep -q io.cos.policy") == 0);
	CHECK(sh(build_path("bin/cos-oci-hook") + " extra </dev/null 2>/dev/null") == 2);
	CHECK(sh(build_path("bin/cos-oci-hook") + " --config '' </dev/null 2>/dev/null") == 2);
	CHECK(sh(build_path("bin/cos-oci-hook") + " --pod-namespace '' </dev/null 2>/dev/null") == 2);
}

TEST_CASE("cos-oci-hook: a rules file it cannot read or check refuses every annotated container", "[hook][rules]")
{
	RulesScope scope;
	Bystander by;
	std::string policy0 = policy_of(by.pid), err;
	const std::string state = state_json(by.pid, "\"io.cos.policy\": \"fifo\"");
	struct {
		std::string json, says;
	} bad[] = {
		{ "{\"enclaves\": ", "containers.json: " },
		{ "[]", "not a JSON object" },
		{ "{\"fail_open\": 1}", "\"fail_open\": wrong type" },
		{ "{\"enclave\": {}}", "unknown key (known: fail_open, enclaves)" },
		{ "{\"enclaves\": {\"fifo\": {}}}", "enclave 'fifo': not a list of rules" },
		{ "{\"enclaves\": {\"fifo\": [{\"best_class\": 1}]}}", "rule 1: names no container" },
		{ "{\"enclaves\": {\"fifo\": [{\"cgroup\": \"/\", \"best_class\": 0}]}}", "\"best_class\" is not a number" },
		{ "{\"enclaves\": {\"fifo\": [{\"cgroup\": \"/a/../b\"}]}}", "\"cgroup\" is not a cgroup path" },
		{ "{\"enclaves\": {\"fifo\": [{\"cgroup\": \"/\"}, {\"namespace\": \"x\", \"class\": 1}]}}",
		  "rule 2: unknown key \"class\"" },
		{ "{\"enclaves\": {}, \"enclaves\": {}}", "duplicate" },
	};
	for (auto &b : bad) {
		rules(b.json);
		CAPTURE(b.json);
		CHECK(hook(state, &err, "--config " + RULES) == 1);
		CAPTURE(err);
		CHECK(err.find("cos-oci-hook: t1: ") == 0);
		CHECK(err.find(b.says) != std::string::npos);
	}
	/* a directory is no rules file either: refused */
	CHECK(hook(state, &err, "--config " + DIR) == 1);
	CHECK(err.find("not a regular file") != std::string::npos);
	/* an unannotated container never reads it */
	CHECK(hook(state_json(by.pid, "\"org.example\": \"x\""), &err, "--config " + DIR) == 0);
	CHECK(policy_of(by.pid) == policy0);
}

TEST_CASE("crun + cos-oci-hook: an annotated container's tasks are COS tasks of the lord, with its class and CPUs; an unannotated one is untouched", "[hook][crun]")
{
	REQUIRE(access("/usr/bin/crun", X_OK) == 0);
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	/* without the wake rule: every wake-up reaches the lord, which reads the cgroup's class */
	PolicyProc lord({build_path("bin/cos-shinjuku"), "--no-wake-rules", "--cpus", "1-3",
			 "--stall-ms", stall_arg(1000), "--starve-ms", starve_arg(0)});
	REQUIRE(lord.wait_for("lord on CPU 0"));
	const std::string work = "yes >/dev/null & yes >/dev/null & exec sleep 60";

	/*
	 * The lord is cos-shinjuku: a container asking for fifo is not created.  (crun drops a hook's
	 * stderr unless run.oci.hooks.stderr names a file.)
	 */
	{
		std::string b = bundle("wrong", "\"io.cos.policy\": \"fifo\", \"run.oci.hooks.stderr\": "
				       "\"" + DIR + "/wrong.err\"", work);
		Container c("cos-wrong", b);
		std::string said = read_file(DIR + "/wrong.err");
		CAPTURE(c.err, said);
		CHECK(c.created != 0);
		CHECK(said.find("cos-oci-hook: cos-wrong: asks for cos policy 'fifo': no enclave "
				"named 'fifo' (running: 'cos-shinjuku')") != std::string::npos);
	}

	/* the operator lets every container join cos-shinjuku, and claim class 1 at best */
	RulesScope scope;
	rules("{\"enclaves\": {\"cos-shinjuku\": [{\"cgroup\": \"/\", \"best_class\": 1}]}}");
	Container cos("cos-annotated", bundle("annotated", "\"io.cos.policy\": \"shinjuku\", "
					       "\"io.cos.class\": \"1\", \"io.cos.enclave\": \"1-3\"", work));
	INFO(cos.err);
	REQUIRE(cos.created == 0);
	Container plain("cos-plain", bundle("plain", "\"org.example\": \"x\"", work));
	INFO(plain.err);
	REQUIRE(plain.created == 0);

	std::vector<pid_t> in = wait_procs(cos, 3), out = wait_procs(plain, 3);
	REQUIRE(in.size() == 3);
	REQUIRE(out.size() == 3);
	REQUIRE(wait_until([&] { return ran_as_cos(in); }));	/* the lord ran them */

	/* annotated: SCHED_EXT, CPUs 1-3 (not 0), the class on its cgroup, listed and placed by the lord */
	cos_task_info *tasks = nullptr;
	size_t nr = 0;
	int fd = cos_open();
	REQUIRE(fd >= 0);
	REQUIRE(cos_get_tasks(fd, &tasks, &nr) == 0);
	close(fd);
	std::set<pid_t> cos_pids;
	std::string listed;
	for (size_t i = 0; i < nr; i++) {
		cos_pids.insert(tasks[i].pid);
		listed += std::to_string(tasks[i].pid) + " " + tasks[i].comm + "; ";
	}
	free(tasks);
	INFO("COS tasks: " << listed);
	for (pid_t p : in) {
		CAPTURE(p);
		CHECK(policy_of(p) == "7");
		CHECK(cpus_of(p) == "1-3");
		CHECK(cos_pids.count(p) == 1);
		int cpu = cpu_of(p);
		CHECK((cpu >= 1 && cpu <= 3));
	}
	char cls[16] = "";
	ssize_t n = getxattr(cos.cgroup_dir(in[0]).c_str(), COS_HINT_CGROUP_XATTR, cls, sizeof(cls) - 1);
	CHECK(n == 1);
	CHECK(std::string(cls, n > 0 ? n : 0) == "1");
	CHECK(cgroup_xattr(in[0], COS_HINT_CGROUP_BEST_XATTR) == "1");	/* the cap of its own records */

	/* unannotated: the fair policy, every CPU, no class, unknown to cos */
	for (pid_t p : out) {
		CAPTURE(p);
		CHECK(policy_of(p) == "0");
		CHECK(cpus_of(p) == cpus_of(getpid()));
		CHECK(cos_pids.count(p) == 0);
	}
	CHECK(getxattr(plain.cgroup_dir(out[0]).c_str(), COS_HINT_CGROUP_XATTR, cls, sizeof(cls)) < 0);

	/* the lord placed them and read their class from the cgroup (none publishes a hint) */
	int st = lord.stop(SIGINT);
	INFO(lord.err);
	CHECK(st == 0);
	size_t p = lord.err.rfind(" placed ");	/* not "wake-placed " */
	REQUIRE(p != std::string::npos);
	CHECK(std::stoull(lord.err.substr(p + 8)) > 0);
	p = lord.err.rfind("hinted ");
	REQUIRE(p != std::string::npos);
	CHECK(std::stoull(lord.err.substr(p + 7)) > 0);
}

TEST_CASE("crun + cos-oci-hook: io.cos.policy resolves a lord by the name it registered", "[hook][crun][enclave]")
{
	BatchLord batch("1-3");
	{
		/* the program's name no longer names it: the refusal lists what runs */
		std::string b = bundle("byprog", "\"io.cos.policy\": \"fifo\", \"run.oci.hooks.stderr\": "
				       "\"" + DIR + "/byprog.err\"", "exec sleep 60");
		Container c("cos-byprog", b);
		std::string said = read_file(DIR + "/byprog.err");
		CAPTURE(c.err, said);
		CHECK(c.created != 0);
		CHECK(said.find("no enclave named 'fifo' (running: 'batch')") != std::string::npos);
	}
	Container c("cos-byname", bundle("byname", "\"io.cos.policy\": \"batch\"", "exec sleep 60"));
	CHECK(policy_of(started(c)) == "7");
	CHECK(batch.lord->stop(SIGINT) == 0);
}

TEST_CASE("crun + cos-oci-hook: two containers under two lords, each on its enclave's CPUs", "[hook][crun][enclave]")
{
	REQUIRE(access("/usr/bin/crun", X_OK) == 0);
	Shim shim;
	REQUIRE_LORD_SUPPORT();
	int ncpu = (int)std::thread::hardware_concurrency();
	if (ncpu < 4)
		SKIP("needs 4 CPUs: a lord CPU and two enclaves");
	PolicyProc batch({build_path("bin/cos-fifo"), "--name", "batch", "--cpus", "1",
			  "--stall-ms", stall_arg(1000)});
	REQUIRE(batch.wait_for("enclave 'batch'"));
	PolicyProc lc({build_path("bin/cos-shinjuku"), "--name", "lc", "--cpus", "2-3",
		       "--stall-ms", stall_arg(1000), "--starve-ms", starve_arg(0)});
	REQUIRE(lc.wait_for("enclave 'lc'"));
	std::map<std::string, unsigned> ids;
	for (auto &e : enclaves_now())
		ids[e.name] = e.id;
	REQUIRE(ids.size() == 2);
	{
		/* CPUs outside the enclave asked for: refused, nothing created */
		std::string b = bundle("outside", "\"io.cos.policy\": \"batch\", \"io.cos.enclave\": "
				       "\"1-2\", \"run.oci.hooks.stderr\": \"" + DIR + "/outside.err\"",
				       "exec sleep 60");
		Container c("cos-outside", b);
		std::string said = read_file(DIR + "/outside.err");
		CAPTURE(c.err, said);
		CHECK(c.created != 0);
		CHECK(said.find("CPU 2 is not one of enclave 'batch''s CPUs") != std::string::npos);
	}
	const std::string work = "yes >/dev/null & exec sleep 60";
	Container cb("cos-batch", bundle("batch", "\"io.cos.policy\": \"batch\"", work));
	INFO(cb.err);
	REQUIRE(cb.created == 0);
	Container cl("cos-lc", bundle("lc", "\"io.cos.policy\": \"lc\"", work));
	INFO(cl.err);
	REQUIRE(cl.created == 0);
	std::vector<pid_t> in_b = wait_procs(cb, 2), in_l = wait_procs(cl, 2);
	REQUIRE(in_b.size() == 2);
	REQUIRE(in_l.size() == 2);
	REQUIRE(wait_until([&] { return ran_as_cos(in_b) && ran_as_cos(in_l); }));	/* their lords ran them */

	/* each container's tasks: SCHED_EXT, its enclave's CPUs, in its enclave (GET_TASKS) */
	std::map<pid_t, unsigned> enclave_of;
	cos_task_info *tasks = nullptr;
	size_t nr = 0;
	int fd = cos_open();
	REQUIRE(fd >= 0);
	REQUIRE(cos_get_tasks(fd, &tasks, &nr) == 0);
	close(fd);
	for (size_t i = 0; i < nr; i++)
		enclave_of[tasks[i].pid] = tasks[i].enclave_id;
	free(tasks);
	for (pid_t p : in_b) {
		CAPTURE(p);
		CHECK(policy_of(p) == "7");
		CHECK(cpus_of(p) == "1");
		CHECK(enclave_of[p] == ids["batch"]);
	}
	for (pid_t p : in_l) {
		CAPTURE(p);
		CHECK(policy_of(p) == "7");
		CHECK(cpus_of(p) == "2-3");
		CHECK(enclave_of[p] == ids["lc"]);
	}
	std::string out;
	REQUIRE(sh(build_path("bin/cosctl") + " tasks", &out) == 0);
	CHECK(out.find(" batch ") != std::string::npos);
	CHECK(out.find(" lc ") != std::string::npos);
	CHECK(batch.stop(SIGINT) == 0);
	CHECK(lc.stop(SIGINT) == 0);
}

TEST_CASE("crun + cos-oci-hook: in partial mode an annotated container is refused, untouched", "[hook][crun][partial]")
{
	REQUIRE(access("/usr/bin/crun", X_OK) == 0);
	{
		Shim full;	/* can a lord register on this kernel at all? */
		REQUIRE_LORD_SUPPORT();
	}
	/* the lord attaches the shim in partial mode itself, its enclave the partition */
	PolicyProc lord({build_path("bin/cos-fifo"), "--partial", "--cpus", "1-2", "--stall-ms",
			 stall_arg(1000)});
	REQUIRE(lord.wait_for("lord on CPU 0"));
	REQUIRE(cos_shim_partial() == 1);
	std::string b = bundle("partial", "\"io.cos.policy\": \"fifo\", \"run.oci.hooks.stderr\": "
			       "\"" + DIR + "/partial.err\"", "exec sleep 60");
	Container c("cos-partial", b);
	std::string said = read_file(DIR + "/partial.err");
	CAPTURE(c.err, said);
	CHECK(c.created != 0);
	CHECK(said.find("the cos shim runs in partial mode") != std::string::npos);
	CHECK(lord.stop(SIGINT) == 0);
	CHECK(access(COS_PARTITION_PATH, F_OK) != 0);	/* the lord's exit removed its partition */
	CHECK(sched_ext_state() == "disabled");
}

TEST_CASE("crun + cos-oci-hook: the operator's rules decide who joins and with which class; fail_open", "[hook][crun][rules]")
{
	BatchLord enclave("1-2");
	RulesScope scope;
	/* refused, with the reason, and nothing created: @ann asked for, under @json's rules */
	auto refused = [](const std::string &name, const std::string &json, const std::string &ann,
			  const std::string &why) {
		rules(json);
		std::string b = bundle(name, ann + ", \"run.oci.hooks.stderr\": \"" + DIR + "/" + name +
				       ".err\"", "exec sleep 60");
		Container c("cos-" + name, b);
		std::string said = read_file(DIR + "/" + name + ".err");
		CAPTURE(name, json, c.err, said);
		CHECK(c.created != 0);
		CHECK(said.find(why) != std::string::npos);
	};
	const std::string batch = "\"io.cos.policy\": \"batch\"";
	/* no rule for the enclave: any container joins, none gets a class */
	refused("noclass", "{}", batch + ", \"io.cos.class\": \"3\"",
		"io.cos.class 3: enclave 'batch' gives no container a class");
	/* the enclave's rules admit another cgroup only, or a pod namespace (never given here) */
	refused("elsewhere", "{\"enclaves\": {\"batch\": [{\"cgroup\": \"/machine.slice\"}, "
		"{\"namespace\": \"prod\"}]}}", batch,
		"is not one that enclave 'batch' admits: no rule in " + RULES + " matches it");
	/* admitted, but a class better than the rule's best */
	refused("urgent", "{\"enclaves\": {\"batch\": [{\"cgroup\": \"/\", \"best_class\": 4}]}}",
		batch + ", \"io.cos.class\": \"3\"", "allows no class more urgent than 4");
	/* fail_open does not open what the rules refuse */
	refused("open-rules", "{\"fail_open\": true, \"enclaves\": {\"batch\": [{\"namespace\": \"prod\"}]}}",
		batch, "is not one that enclave 'batch' admits");
	/* no lord for the policy: refused, unless fail_open, which lets it run outside cos */
	refused("nolord", "{}", "\"io.cos.policy\": \"nosuch\"", "no enclave named 'nosuch'");
	rules("{\"fail_open\": true}");
	{
		Container c("cos-open", bundle("open", "\"io.cos.policy\": \"nosuch\"", "exec sleep 60"));
		CHECK(policy_of(started(c)) == "0");	/* it runs, outside cos */
	}
	/* the rule's class and below: admitted, the class on its cgroup */
	rules("{\"enclaves\": {\"batch\": [{\"namespace\": \"prod\"}, {\"cgroup\": \"/\", \"best_class\": 4}]}}");
	{
		Container c("cos-ok", bundle("ok", batch + ", \"io.cos.class\": \"4\"", "exec sleep 60"));
		pid_t p = started(c);
		CHECK(policy_of(p) == "7");
		CHECK(cgroup_xattr(p, COS_HINT_CGROUP_XATTR) == "4");
		CHECK(cgroup_xattr(p, COS_HINT_CGROUP_BEST_XATTR) == "4");
	}
	/* an enclave without rules: admitted, and its own records may claim no class */
	rules("{}");
	{
		Container c("cos-free", bundle("free", batch, "exec sleep 60"));
		pid_t p = started(c);
		CHECK(policy_of(p) == "7");
		CHECK(cgroup_xattr(p, COS_HINT_CGROUP_XATTR) == "");
		CHECK(cgroup_xattr(p, COS_HINT_CGROUP_BEST_XATTR) == "none");
	}
	CHECK(enclave.lord->stop(SIGINT) == 0);
}

/*
 * What cos-oci-hook's cap does in a lord (libcos/hint_cache.c): the class a task claims in its own
 * hint record is capped by the nearest trusted.cos.best_class up its cgroup path, a cgroup the
 * container made below its own included; "none" (or a bad value) takes the class away.
 */
TEST_CASE("a lord caps the class a task claims in its own record by its cgroup's best class", "[hook][rules][hints]")
{
	const std::string top = "/sys/fs/cgroup/cos-cap-test", below = top + "/inner";
	struct Cgroups {
		std::string top, below;
		~Cgroups() { rmdir(below.c_str()); rmdir(top.c_str()); }
	} cgroups{top, below};
	rmdir(below.c_str());
	rmdir(top.c_str());
	REQUIRE(mkdir(top.c_str(), 0755) == 0);
	REQUIRE(mkdir(below.c_str(), 0755) == 0);
	auto best = [](const std::string &cg, const char *v) {
		if (v)
			REQUIRE(setxattr(cg.c_str(), COS_HINT_CGROUP_BEST_XATTR, v, strlen(v), 0) == 0);
		else
			removexattr(cg.c_str(), COS_HINT_CGROUP_BEST_XATTR);
	};
	/* the class a lord reads for a process in @cg whose thread claims @claim */
	auto read_class = [](const std::string &cg, unsigned int claim) -> long {
		int ready[2], go[2];
		REQUIRE(pipe(ready) == 0);
		REQUIRE(pipe(go) == 0);
		pid_t pid = fork();
		if (pid == 0) {
			std::string me = std::to_string(getpid());
			int fd = open((cg + "/cgroup.procs").c_str(), O_WRONLY);
			bool moved = fd >= 0 && write(fd, me.c_str(), me.size()) == (ssize_t)me.size();
			cos_hint *h = moved ? cos_hint_self() : nullptr;
			if (h)
				cos_hint_set(h, claim, 0, 0);
			char ok = h ? 1 : 0, b;
			(void)!write(ready[1], &ok, 1);
			(void)!read(go[0], &b, 1);
			_exit(0);
		}
		char ok = 0;
		REQUIRE(read(ready[0], &ok, 1) == 1);
		cos_hint_cache *c = nullptr;
		REQUIRE(cos_hint_cache_new(&c, 4, nullptr) == 0);
		cos_hint h = {};
		int err = -EAGAIN;
		for (int i = 0; i < 50 && err; i++) {	/* each read a second later: past the retry */
			err = cos_hint_cache_read(c, 0, pid, &h, 1000000000ull * (i + 1));
			cos_hint_cache_settle(c);
		}
		cos_hint_cache_free(c);
		(void)!write(go[1], "x", 1);
		waitpid(pid, nullptr, 0);
		for (int fd : {ready[0], ready[1], go[0], go[1]})
			close(fd);
		REQUIRE(ok == 1);
		REQUIRE(err == 0);
		REQUIRE(h.tid == pid);
		return h.hint_class;
	};
	CHECK(read_class(below, 1) == 1);		/* no cap anywhere: what it claims */
	best(top, "4");
	CHECK(read_class(top, 1) == 4);			/* capped */
	CHECK(read_class(below, 1) == 4);		/* a cgroup below: capped the same */
	CHECK(read_class(below, 7) == 7);		/* a class the cap allows stays */
	CHECK(read_class(below, 0) == 0);		/* none claimed: none */
	best(below, "2");
	CHECK(read_class(below, 1) == 2);		/* the nearest cap counts */
	best(below, nullptr);
	best(top, "none");
	CHECK(read_class(below, 1) == 0);		/* no class at all */
	best(top, "4x");
	CHECK(read_class(below, 3) == 0);		/* a bad cap: none (closed) */
	best(top, "12345678901234567890");
	CHECK(read_class(below, 3) == 0);		/* one longer than any class too */
}

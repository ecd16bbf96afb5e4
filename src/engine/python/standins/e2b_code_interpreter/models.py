"""The result objects of rwb's E2B stand-in, shaped as `e2b_code_interpreter.models`
shapes them: an Execution with `results`, `logs`, `error` and `text` (the text of
the cell's main result, its last expression)."""


class Result:
    def __init__(self, text=None, is_main_result=False):
        self.text = text
        self.is_main_result = is_main_result

    def __repr__(self):
        return "Result(%r)" % (self.text,)


class Logs:
    def __init__(self, stdout=None, stderr=None):
        self.stdout = list(stdout or [])
        self.stderr = list(stderr or [])


class ExecutionError:
    def __init__(self, name, value, traceback):
        self.name = name
        self.value = value
        self.traceback = traceback


class Execution:
    def __init__(self, results=None, logs=None, error=None, execution_count=None):
        self.results = list(results or [])
        self.logs = logs or Logs()
        self.error = error
        self.execution_count = execution_count

    @property
    def text(self):
        for result in self.results:
            if result.is_main_result:
                return result.text
        return None

    @staticmethod
    def from_answer(answer):
        """One cell's answer of rwb's `/execute_batch` as an Execution."""
        execution = answer.get("execution") or {}
        error = execution.get("error")
        return Execution(
            results=[Result(r.get("text"), bool(r.get("is_main_result"))) for r in execution.get("results") or []],
            logs=Logs(**(execution.get("logs") or {})),
            error=ExecutionError(error.get("name"), error.get("value"), error.get("traceback")) if error else None,
            execution_count=execution.get("execution_count"),
        )

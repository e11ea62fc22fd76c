// attack: queueMicrotask re-queuing itself
// phase: producer
// expect: limit_exceeded:jobs|cpu_time
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    const f = () => queueMicrotask(f);
    f();
    await new Promise(() => {});
  } } },
});

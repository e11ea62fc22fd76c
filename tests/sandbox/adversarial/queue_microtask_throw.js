// attack: queueMicrotask callback throwing a hostile object
// phase: producer
// expect: completed:1
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    queueMicrotask(() => { throw { toString() { for (;;) {} } }; });
    await null;
    await null;
    return 1;
  } } },
});

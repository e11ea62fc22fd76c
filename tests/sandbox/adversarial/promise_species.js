// attack: Promise species capability whose resolve throws a hostile object from a job
// phase: producer
// expect: limit_exceeded:cpu_time|wall_time
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    const evil = { toString() { for (;;) {} }, get stack() { for (;;) {} } };
    function Species(executor) { executor(() => { throw evil; }, () => { throw evil; }); }
    const p = Promise.resolve(1);
    Object.defineProperty(p, 'constructor', { value: { [Symbol.species]: Species } });
    p.then(() => 1);
    await new Promise(() => {});
  } } },
});

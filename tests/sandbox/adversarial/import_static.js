// attack: static import of a module
// phase: producer
// expect: logic_error:cannot import
import fs from 'fs';
export default Keep.workflow({ producers: { h: async () => 1 } });

// Jupiter's job rule where files enter the pipeline: files sharing a job prefix are one item.
import { expect } from 'chai';
import { groupByJob } from '../../circe/home/source.js';

describe('groupByJob (the home source and submit)', () => {
  it('puts files of one job together, in the order each job first appears', () => {
    const files = ['/in/7_right.jpeg', '/in/1botnet.ipsum', '/in/7_left.jpeg', '/x/8_left.jpeg', '/in/2botnet.ipsum'];
    expect(groupByJob(files)).to.deep.equal([
      { job: '7', files: ['/in/7_right.jpeg', '/in/7_left.jpeg'] },
      { job: '1botnet', files: ['/in/1botnet.ipsum'] },
      { job: '8', files: ['/x/8_left.jpeg'] },
      { job: '2botnet', files: ['/in/2botnet.ipsum'] },
    ]);
  });
  it('refuses two files of one name (they would overwrite each other in pathin), naming both', () => {
    expect(() => groupByJob(['/a/1_x.txt', '/b/1_x.txt'])).to.throw(/\/a\/1_x\.txt and \/b\/1_x\.txt have the same name 1_x\.txt/);
  });
  it('takes the same file given twice once', () => {
    expect(groupByJob(['/a/1_x.txt', '/a/./1_x.txt', '/a/1_y.txt'])).to.deep.equal([{ job: '1', files: ['/a/1_x.txt', '/a/1_y.txt'] }]);
  });
});
